package main
import (
	_ "github.com/gin-gonic/gin"
	_ "gorm.io/gorm"
	_ "gorm.io/driver/postgres"
	_ "github.com/glebarez/sqlite"
	_ "github.com/hashicorp/go-multierror"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/chromedp/chromedp"
	_ "github.com/jackc/pgx/v5/stdlib"
)
func main(){}
